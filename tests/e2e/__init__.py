"""End to end in real editors (Neovim, VS Code in code-server) and real installs of the shell command."""
