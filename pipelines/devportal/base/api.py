"""The Developer API as both of its sides know it: the paths of its endpoints, the resources a
sync reads from them, the text form of its timestamps (the spec's section 4).

A base module that imports nothing, so that the client, the sandbox (a separate server that
shares no other code with the pipeline) and the tests' hostile server all name the API from
this one place.
"""

API_PREFIX = "/api/v1/developer"
SUBSCRIPTIONS_PATH = API_PREFIX + "/subscriptions"
USER_SETTINGS_PATH = API_PREFIX + "/users/settings"
# an account is `USER_ACCOUNTS_PREFIX + "<user id>"`
USER_ACCOUNTS_PREFIX = API_PREFIX + "/users/"
USER_ACCOUNTS_PATH = USER_ACCOUNTS_PREFIX + "{user_id}"

# what a sync can read, one resource per endpoint, in the order it reads them
RESOURCES = ("subscriptions", "user_settings", "user_accounts")
# the resources the API gives no time filter: a window run reads them whole, and only when due
UNTIMED = ("user_settings", "user_accounts")

# the statuses the spec shows (section 3): every other status is the API's own
SPEC_STATUSES = ("active", "canceled")

# The API's date-time text (`expires_at`, the `start`/`end` filters): naive UTC, no `T`, no zone.
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"

# The sandbox marks its `Date` as a simulated clock; believed only from a loopback address.
SIMULATED_CLOCK_HEADER = "X-Sandbox-Clock"
