"""Click commands, one module per area; each exports COMMANDS (registered in mirrorspec.cli).

The top of the house: only `cli` imports these modules, they never import each other (`params`
is shared), and they are the only modules that import `mirrorspec.spark` (lazily)."""
