// The touchstone CLI: see ../shared/cli-contract.md (issue 5).
import Touchstone
print("touchstone: not yet implemented")
