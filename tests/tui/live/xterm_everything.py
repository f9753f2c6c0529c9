"""An agent that prints every escape sequence xterm knows, for the hostile-text tests.

Run as a job's agent (`--agent-cmd "python xterm_everything.py"`): it writes queries the
terminal would answer with key presses (device attributes, cursor position, modes,
versions, capabilities, colours, keyboard protocols), title and clipboard changes,
links, mouse and focus reporting, the alternate screen, bracketed paste, cursor shapes,
DCS/APC/PM/SOS strings, C1 controls in 8-bit form (raw bytes and UTF-8), charset
switches and bidi overrides, each between two printable markers; then Textual markup as
plain text, a last line, and it waits for its pane to be closed. A control room that
shows this pane must show the markers and the markup literally, and pass none of the
sequences to the operator's terminal.
"""

from __future__ import annotations

import sys
import time

ESC = "\x1b"
BEL = "\x07"
ST = ESC + "\\"
CSI = ESC + "["
OSC = ESC + "]"
DCS = ESC + "P"

TITLE = "PWNED-TITLE"
"""What every title-setting sequence here sets: it must never become the terminal's title."""
LAST_LINE = "XTERM-EVERYTHING-DONE"
MARKUP = "[@click=app.quit]click[/] [link=https://evil.example]link[/link] ev[/] [b]bold"

SEQUENCES: list[tuple[str, str | bytes]] = [
    # titles and the icon name
    ("osc0", f"{OSC}0;{TITLE}{BEL}"),
    ("osc1", f"{OSC}1;{TITLE}{BEL}"),
    ("osc2", f"{OSC}2;{TITLE}{ST}"),
    ("osc2-c1", f"\x9d2;{TITLE}\x9c"),
    ("title-push", f"{CSI}22;0t"),
    ("title-report", f"{CSI}21t"),
    ("icon-report", f"{CSI}20t"),
    # clipboard, links, notifications, cwd, colours
    ("osc52-set", f"{OSC}52;c;cm0gLXJmIH4K{BEL}"),
    ("osc52-query", f"{OSC}52;c;?{BEL}"),
    ("osc8", f"{OSC}8;;https://evil.example{ST}link{OSC}8;;{ST}"),
    ("osc7", f"{OSC}7;file://evil/tmp{ST}"),
    ("osc9", f"{OSC}9;notify{BEL}"),
    ("osc777", f"{OSC}777;notify;t;b{BEL}"),
    ("osc1337", f"{OSC}1337;SetUserVar=x=eA=={BEL}"),
    ("osc4-query", f"{OSC}4;1;?{BEL}"),
    ("osc10-query", f"{OSC}10;?{BEL}"),
    ("osc11-query", f"{OSC}11;?{ST}"),
    ("osc12-query", f"{OSC}12;?{BEL}"),
    ("osc4-set", f"{OSC}4;1;rgb:ff/00/00{BEL}"),
    ("osc104", f"{OSC}104{BEL}"),
    ("osc50-font", f"{OSC}50;?{BEL}"),
    # device attributes and status reports
    ("da1", f"{CSI}c"),
    ("da1-0", f"{CSI}0c"),
    ("da2", f"{CSI}>c"),
    ("da3", f"{CSI}=c"),
    ("dsr", f"{CSI}5n"),
    ("cpr", f"{CSI}6n"),
    ("decxcpr", f"{CSI}?6n"),
    ("dsr-printer", f"{CSI}?15n"),
    ("decrqm-ansi", f"{CSI}4$p"),
    ("decrqm-private", f"{CSI}?2026$p"),
    ("xtversion", f"{CSI}>0q"),
    ("xtgettcap", f"{DCS}+q544e;636f6c6f7273{ST}"),
    ("decrqss", f"{DCS}$qm{ST}"),
    ("decrqss-cursor", f"{DCS}$q q{ST}"),
    ("xtwinops-size", f"{CSI}14t{CSI}18t{CSI}19t"),
    ("xtwinops-resize", f"{CSI}8;5;20t"),
    ("xtwinops-iconify", f"{CSI}2t"),
    ("xtsmgraphics", f"{CSI}?1;1S"),
    ("decreqtparm", f"{CSI}x"),
    ("enq", "\x05"),
    # keyboard protocols
    ("kitty-query", f"{CSI}?u"),
    ("kitty-push", f"{CSI}>1u"),
    ("kitty-set", f"{CSI}=1;1u"),
    ("kitty-pop", f"{CSI}<u"),
    ("xtmodkeys", f"{CSI}>4;2m"),
    ("xtqmodkeys", f"{CSI}?4m"),
    # mouse, focus, paste, alternate screen, cursor
    ("mouse-on", f"{CSI}?1000h{CSI}?1002h{CSI}?1003h{CSI}?1006h{CSI}?1015h{CSI}?1005h"),
    ("focus-on", f"{CSI}?1004h"),
    ("paste-on", f"{CSI}?2004h"),
    ("sync-on", f"{CSI}?2026h"),
    ("alt-screen", f"{CSI}?1049hALT-SCREEN-TEXT{CSI}?1049l"),
    ("alt-47", f"{CSI}?47h{CSI}?47l"),
    ("decscusr", f"{CSI}5 q"),
    ("cursor-hide", f"{CSI}?25l{CSI}?25h"),
    ("decckm", f"{CSI}?1h{ESC}="),
    # strings
    ("dcs", f"{DCS}1000p{ST}"),
    ("dcs-tmux", f"{DCS}tmux;{ESC}{ESC}]0;{TITLE}{BEL}{ST}"),
    ("dcs-sixel", f"{DCS}q#0;2;0;0;0#0!10~{ST}"),
    ("apc-kitty-graphics", f"{ESC}_Gf=24,s=1,v=1;AAAA{ST}"),
    ("pm", f"{ESC}^private message{ST}"),
    ("sos", f"{ESC}Xstart of string{ST}"),
    # C1 controls, 8-bit: raw bytes (not UTF-8) and UTF-8 encoded
    ("c1-raw-csi", b"\x9b6n\x9bc"),
    ("c1-raw-osc", b"\x9d0;" + TITLE.encode() + b"\x07"),
    ("c1-raw-dcs", b"\x90$qm\x9c"),
    ("c1-raw-apc-pm-sos", b"\x9fapc\x9c\x9epm\x9c\x98sos\x9c"),
    ("c1-raw-misc", b"\x84\x85\x88\x8d\x8e\x8f\x96\x97"),
    ("c1-utf8-csi", "\x9b6n\x9b>c"),
    ("c1-utf8-osc", f"\x9d0;{TITLE}\x07"),
    ("c1-utf8-dcs", "\x90+q544e\x9c"),
    ("c1-utf8-apc-pm-sos", "\x9fapc\x9c\x9epm\x9c\x98sos\x9c"),
    ("c1-utf8-misc", "\x84\x85\x88\x8d\x8e\x8f\x96\x97"),
    # charsets, resets, screen changes
    ("dec-graphics", f"{ESC}(0lqk{ESC}(B"),
    ("shift-out", "\x0elqk\x0f"),
    ("decaln", f"{ESC}#8"),
    ("decstr", f"{CSI}!p"),
    ("ris", f"{ESC}c"),
    ("erase-scrollback", f"{CSI}3J"),
    ("bell", BEL),
    # bidi
    ("bidi", "a\u202eRTL\u202cb\u2066iso\u2069\u200f\u061c"),
]


def payload() -> bytes:
    """Every sequence between printable markers, then markup, then the last line."""
    out = bytearray()
    for name, sequence in SEQUENCES:
        raw = sequence if isinstance(sequence, bytes) else sequence.encode("utf-8")
        out += f"<{name}>".encode() + raw + f"</{name}>\r\n".encode()
    out += f"{CSI}31mred{CSI}0m {MARKUP}\r\n{LAST_LINE}\r\n".encode()
    return bytes(out)


def main() -> None:
    sys.stdout.buffer.write(payload())
    sys.stdout.buffer.flush()
    while True:  # stays up, as an agent does, until its pane is closed
        time.sleep(3600)


if __name__ == "__main__":
    main()
