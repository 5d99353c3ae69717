package main

import (
	"github.com/spf13/pflag"

	"github.com/skrip-dev/skrip/internal/config"
)

func flagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	return fs
}
