"""The API's endpoints and the resources a sync reads from them."""

SUBSCRIPTIONS_PATH = "/api/v1/developer/subscriptions"
USER_SETTINGS_PATH = "/api/v1/developer/users/settings"
USER_ACCOUNTS_PATH = "/api/v1/developer/users/{user_id}"
# what a sync can read, one resource per endpoint, in the order it reads them
RESOURCES = ("subscriptions", "user_settings", "user_accounts")
