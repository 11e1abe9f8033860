"""A directory written as a whole: into a temporary sibling, renamed over the target once complete, so a failure
never leaves a half-written one (scripts/export_to_hf.py, scripts/peft_adapter.py)."""
import os
import shutil
from contextlib import contextmanager


@contextmanager
def replaced_dir(out, overwrite, error):
    """Yields a temporary directory that replaces `out` when the block ends without an exception (and is removed when
    it raises). `error(message)` makes the exception raised first when `out` holds files and `overwrite` is false."""
    if os.path.exists(out) and os.listdir(out) and not overwrite:
        raise error(f"{out}: exists and is not empty (give --overwrite to replace it)")
    tmp = out.rstrip("/") + f".tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        yield tmp
        if os.path.exists(out):
            shutil.rmtree(out)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
