"""Click commands, one module per area; each exports COMMANDS (registered in mirrorspec.cli)."""
