"""The control room's widgets, one per module; none of them does I/O on the event loop."""
