// Contract test suites every implementation of a port runs (STYLE.md "Ports").
