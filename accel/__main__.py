import sys

from accel.cli.main import main

# The guard matters: Dask starts worker processes with multiprocessing's "spawn", which
# re-imports the main module (as __mp_main__) in each of them.
if __name__ == "__main__":
    sys.exit(main())
