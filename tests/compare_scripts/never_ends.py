"""Never ends on its own (and starts a child that would outlive it): --timeout must end both."""

import subprocess
import sys
import time

subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("started", flush=True)
while True:
    time.sleep(1)
