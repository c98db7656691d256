"""Pictures and pages: scaling curves, trends, counts against vCPUs, reports."""
