"""The NVTXSHIM_* variables as libnvtxshim/variables.def lists them: the one
list that the library's parser, NVTXSHIM_HELP, the command's options and the
user guide's table (docs/user-guide.md) are checked against."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def variables():
    """[(NVTXSHIM_NAME, option, argument or None)] in the order of the list."""
    with open(os.path.join(ROOT, "libnvtxshim", "variables.def")) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    found = re.findall(r'NVS_VARIABLE\(\s*\w+,\s*"(\w+)",\s*"([\w-]+)",\s*(NULL|"[^"]*")', text)
    return [("NVTXSHIM_" + name, option, None if argument == "NULL" else argument.strip('"'))
            for name, option, argument in found]
