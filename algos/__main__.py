"""``python -m algos ...``: the ``algos`` command, also as ``torchrun ... -m algos train ...``.

Under ``torchrun`` rank 0 reports for the run: the other ranks' standard output is discarded
(their standard error, with warnings and errors, is kept; torchrun prefixes it ``[rankN]:``),
and an exception that ends a rank is recorded for the launcher (``torch.distributed.elastic``'s
``record``), so its summary shows that rank's traceback.
"""

import os
import sys

from algos.cli import main

if __name__ == "__main__":
    if "TORCHELASTIC_RUN_ID" in os.environ:  # started by torchrun
        from torch.distributed.elastic.multiprocessing.errors import record

        if os.environ.get("RANK", "0") != "0":
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
        main = record(main)
    sys.exit(main())
