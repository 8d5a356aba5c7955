"""``python -m mnemo.cli``: the `mnemo` command without its installed script (tests start servers so)."""

from mnemo.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
