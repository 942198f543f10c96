# SPDX-License-Identifier: GPL-2.0
"""The host unit tests of numa_matrix: test_<module>.py each, run as
programs by Meson (suite unit); helpers.py and data/ are theirs."""
