"""Fork a child while the profiler's window records, and let SIGTERM end the child.

torchrun stops workers, data-loader workers included, with SIGTERM. Prints how the child ended
and, read from the status directory right after, the state of this process's own record: a
child must neither survive SIGTERM nor rewrite the parent's record. At the end, once no window
records, prints whether SIGTERM has its default action again (a Python handler would let a
process blocked in C, a hung collective, ignore it).
"""

import glob
import json
import os
import signal
import time

import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1, 7):
    model(torch.ones(2, 4)).sum().backward()
    optimizer.step()
    if step == 3:
        pid = os.fork()
        if pid == 0:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
            os._exit(0)
        _, code = os.waitpid(pid, 0)
        print(f"child ended by signal {os.WTERMSIG(code)}" if os.WIFSIGNALED(code) else "child survived")
        pattern = os.path.join(os.environ["NPU_PROF_OUTPUT_DIR"], "npuprof_status", f"*_pid{os.getpid()}.*.json")
        (path,) = glob.glob(pattern)
        with open(path) as handle:
            print(f"parent record: {json.load(handle)['state']}")
print("SIGTERM after the window: " + ("default" if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL else "handled"))
