package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/mcpserver"
	"github.com/skrip-dev/skrip/internal/version"
)

func (e *env) mcpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve sandboxes to AI agents as MCP tools, over stdin and stdout",
		Long: "Runs an MCP server on stdin and stdout for an AI agent's MCP client to start as a command.\n" +
			"Its tools (sandbox_create, sandbox_exec, sandbox_fs_read, sandbox_fs_write, sandbox_stage_file,\n" +
			"sandbox_publish_file, files_list) call the skrip server at --server as the user of --token.\n" +
			"stdout carries the protocol only; messages go to stderr.",
		Example: `  {"mcpServers": {"skrip": {"command": "skrip", "args": ["mcp", "--server", "https://skrip.example.com"],
                          "env": {"SKRIP_TOKEN": "skr_..."}}}}`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			if isTerminal(e.stdin) {
				fmt.Fprintln(e.stderr, "skrip mcp speaks MCP (JSON-RPC) on stdin and stdout: configure it as a command in an MCP client.")
			}
			// Checked before serving (the client's first messages wait in the pipe), so
			// the warning is always there, however soon the client hangs up.
			e.checkMCPServer(cmd.Context(), c)
			return mcpserver.Serve(cmd.Context(), c, version.Version, e.stdin, e.stdout)
		},
	}
}

// checkMCPServer says on stderr when the server or the token does not work, so a wrong
// client configuration shows in the MCP client's log before any tool fails. It waits at
// most 5 seconds for the server.
func (e *env) checkMCPServer(ctx context.Context, c *client.Client) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.Me(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintf(e.stderr, "skrip mcp: warning: %v (every tool will fail until this is fixed)\n", err)
	}
}
