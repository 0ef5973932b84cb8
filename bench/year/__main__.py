import sys

from bench.year import main

sys.exit(main())
