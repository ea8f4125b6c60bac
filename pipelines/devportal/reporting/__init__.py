"""What an owner reads: the report and its page, the charts, the notebooks' helpers.

One job per module, imports running one way (each only from those above it):

    number_format  one formatter for counts, money, percents and percentage points
    charts         the charts of the page and the notebooks
    report         the business report
    notebook       which warehouse a notebook reads; errors shown as one line in a notebook
"""
