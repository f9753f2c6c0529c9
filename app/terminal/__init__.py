"""Terminal output made safe to show: agent pane bytes through an emulator, out as Rich Text."""
