"""``python -m powercontext.supervisor``: runs :func:`powercontext.entrypoints.supervisor.main`."""

import sys

from powercontext.entrypoints.supervisor import main

if __name__ == "__main__":
    sys.exit(main())
