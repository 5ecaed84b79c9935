"""Test support shipped with ownergc: fault injection and the pytest plugin.

Submodules are imported on demand so that ``import ownergc.testing`` stays
cheap and never needs pytest or hypothesis.
"""

from __future__ import annotations
