package apptest

import (
	"github.com/spf13/pflag"

	"github.com/skrip-dev/skrip/internal/config"
)

// nilFlags is a flag set on which no flag was given.
func nilFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	return fs
}
