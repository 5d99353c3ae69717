package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/skrip-dev/skrip/internal/client"
)

// Exit codes of the CLI. docs/cli.md lists them, and TestExitCodes checks that the binary
// returns what it says.
const (
	exitFailure     = 1   // a refused request, a failed run, a local error
	exitUsage       = 2   // bad flags or arguments, an unknown verb
	exitNotFound    = 3   // the server has no such thing (404, not_found)
	exitUnavailable = 4   // the server failed (5xx, unavailable) or could not be reached
	exitExecFailed  = 125 // sandbox exec: skrip failed, not the command
)

// passesExitCode is the annotation of a verb that exits with the code of the command it
// ran (sandbox exec, like docker exec). Its own failures then exit exitExecFailed rather
// than 1-4, which the command could return as well.
const passesExitCode = "skrip/passes-exit-code"

// exitError ends the CLI with the exit code of what a verb ran (a sandbox's command, a
// run that failed). err, when set, is printed; a nil err prints nothing, since the code
// says it all.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e exitError) Unwrap() error { return e.err }

// exitCode is the exit code for err, a verb's failure.
func exitCode(err error) int {
	var (
		ee  exitError
		ue  usageError
		ae  *client.Error
		une *client.UnreachableError
		ope *net.OpError
		dne *net.DNSError
	)
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &ae):
		return apiExitCode(ae)
	case errors.As(err, &une), errors.As(err, &ope), errors.As(err, &dne), errors.Is(err, io.ErrUnexpectedEOF):
		// No answer, or an answer cut off: the connection, not the request, failed.
		return exitUnavailable
	}
	return exitFailure
}

// apiExitCode is the exit code for an error answer of the server (docs/spec.md §3).
func apiExitCode(e *client.Error) int {
	switch {
	case e.Status == http.StatusNotFound || e.Code == "not_found":
		return exitNotFound
	case e.Code == "quota_exceeded":
		// 507, but a refusal of this request: waiting or another server will not help.
		return exitFailure
	case e.Status >= 500 || e.Code == "unavailable" || e.Code == "internal":
		return exitUnavailable
	}
	return exitFailure
}
