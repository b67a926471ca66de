"""mirrorspec's tests: a package, so `tests.support` (the shared helpers) imports the same way
from every test folder, from another working directory and in every pytest-xdist worker."""
