#!/bin/sh
# Test fixture only: never actually played.
exit 0
