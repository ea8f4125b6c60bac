"""What the desktop client is known to accept and assume (spec/desktop-client-facts.md).

The spec leaves these lists "not shown"; the values below were read from the client's public
source. A value outside them is a warning (the client may have grown), never an error. The
defaults are the ones the client applies, so the warehouse records what users actually get.
"""

from __future__ import annotations

SUPPORTED_PLATFORMS = ("twitch", "youtube", "facebook", "mixer")

KNOWN_SOURCE_TYPES = ("browser_source",)
KNOWN_SLOTS = ("top_nav", "chat", "background")
TOP_NAV_SLOT = "top_nav"
KNOWN_PERMISSIONS = (
    "slobs.scenes-sources",
    "slobs.obs-settings",
    "slobs.streaming",
    "slobs.authorization",
    "slobs.scene-collections",
    "slobs.scene-transitions",
    "slobs.external-links",
    "slobs.notifications",
    "slobs.hotkeys",
)

# Top-level properties the spec calls optional but the client's loader refuses to go without.
CLIENT_REQUIRED_TOP_LEVEL = ("permissions", "sources", "pages")

# Source without initialSize: the client opens it at 800 x 600 pixels.
DEFAULT_INITIAL_SIZE_TYPE = "absolute"
DEFAULT_INITIAL_WIDTH = 800
DEFAULT_INITIAL_HEIGHT = 600

DEFAULT_REDIRECT_TO_TOP_NAV = False
DEFAULT_PERSISTENT = False
DEFAULT_ALLOW_POPOUT = True
DEFAULT_POPOUT_WIDTH = 600
DEFAULT_POPOUT_HEIGHT = 500
DEFAULT_POPOUT_MIN_WIDTH = 600
DEFAULT_POPOUT_MIN_HEIGHT = 500

MIN_ICON_SIDE = 256
