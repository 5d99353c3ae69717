// Package version holds the build's version, set at link time with
// -ldflags "-X github.com/skrip-dev/skrip/internal/version.Version=v1.2.3".
package version

// Version is the release this binary was built from.
var Version = "0.1.0-dev"
