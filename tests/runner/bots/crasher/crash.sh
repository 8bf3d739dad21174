#!/bin/sh
# Test bot: dies at once with a message on stderr, every game.
echo "crasher: segmentation fault (pretend)" >&2
exit 3
