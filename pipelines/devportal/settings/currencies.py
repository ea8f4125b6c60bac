"""The ISO 4217 currency codes a price book may name (`[analytics] currency`).

Python's standard library has no list of currencies and no installed package ships one, so this
module is the checked-in list. Source: ISO 4217 "List One: Current currency & funds code list",
published by SIX Group, the standard's maintenance agency (www.six-group.com, "ISO 4217
currency codes"), as amended up to 2026-01: every alphabetic code of List One, including the
fund codes (BOV, CHE, ...) and the supranational units (XAF, XCD, XCG, XDR, ...), except XTS
(reserved for testing) and XXX ("no currency"), which no price is in. Codes withdrawn by then
are not here: ANG (replaced by XCG, 2025), BGN (Bulgaria joined the euro, 2026), HRK (the euro,
2023), SLL (replaced by SLE), ZWL (replaced by ZWG, 2024), CUC, VEF, MRO, STD. Update this list
when the agency publishes an amendment that adds a code.

Checked on 2026-11-24 against pycountry 26.2.16 (Debian's iso-codes data, 178 codes): the same
codes, but for XTS and XXX (left out above) and XAD (the Arab Accounting Dinar, a unit of
account of the Arab Monetary Fund that no app is priced in).
"""

from __future__ import annotations

_LIST_ONE = """
    AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BHD BIF BMD BND BOB BOV BRL BSD BTN BWP
    BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN
    ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK
    JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD
    MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP
    PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP
    SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV
    WST XAF XAG XAU XBA XBB XBC XBD XCD XCG XDR XOF XPD XPF XPT XSU XUA YER ZAR ZMW ZWG
"""
CURRENCIES: frozenset[str] = frozenset(_LIST_ONE.split())
