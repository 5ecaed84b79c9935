"""Which ownergc a benchmark measures: the installed one, else this checkout.

``pip install .`` puts the compiled graph core in site-packages and leaves
the checkout's own modules pure; a benchmark that put the checkout first on
``sys.path`` measured the pure core in a fresh clone however ownergc was
installed. So the installed package (an editable install of this checkout
included) is measured, with a line on stderr when it is not this checkout;
``PYTHONPATH=<checkout>`` measures a checkout (a worktree, say) instead, and
a checkout nothing installed is measured as it is.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]


def checkout_unless_installed() -> list[str]:
    """What to add to ``sys.path`` so that ``import ownergc`` (and ``ownergc_backends``)
    imports what is described above: the checkout when nothing provides ownergc."""
    spec = importlib.util.find_spec("ownergc")
    if spec is None or spec.origin is None:
        return [str(CHECKOUT)]
    package = Path(spec.origin).resolve().parent
    if not package.is_relative_to(CHECKOUT):
        print(
            f"benchmarks: measuring the installed ownergc in {package}, not this checkout "
            f"({CHECKOUT}); PYTHONPATH={CHECKOUT} measures the checkout",
            file=sys.stderr,
        )
    return []
