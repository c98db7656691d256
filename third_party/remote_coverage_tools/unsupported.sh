#!/bin/sh
echo "perfscale: coverage collection is not supported in this offline workspace" >&2
exit 1
