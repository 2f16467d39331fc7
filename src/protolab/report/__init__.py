"""Reports: the terminal table, Markdown and HTML summaries, figures and exports."""
