"""``python -m powercontext.quickstart``: runs :func:`powercontext.entrypoints.quickstart.main`."""

import sys

from powercontext.entrypoints.quickstart import main

if __name__ == "__main__":
    sys.exit(main())
