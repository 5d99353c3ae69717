package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// usageError is a command line the CLI cannot take: a bad flag, a missing or extra
// argument, an unknown verb. Main prints it with the command's usage and exits exitUsage.
type usageError struct {
	cmd *cobra.Command
	msg string
}

func (e usageError) Error() string { return e.msg }

// usageErrorf makes a usageError of cmd: "<verb path>: <message>", such as
// "files download: missing KEY". The root's own errors have no path.
func usageErrorf(cmd *cobra.Command, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if cmd.HasParent() {
		msg = strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ") + ": " + msg
	}
	return usageError{cmd: cmd, msg: msg}
}

// checkArgs gives every command of the tree under cmd its argument check, so that every
// verb refuses a bad command line the same way: a verb's check comes from its Use line
// (see positional), and a group of verbs refuses an unknown verb and shows its help
// when given none. Flag errors become usage errors too.
func checkArgs(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		checkArgs(c)
	}
	if !cmd.HasParent() {
		cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErrorf(c, "%v", err) })
		// A group runs (to refuse an unknown verb), but its usage is its verbs alone, not
		// a "skrip files [flags]" line of its own.
		cmd.SetUsageTemplate(strings.Replace(cmd.UsageTemplate(), "Usage:{{if .Runnable}}", "Usage:{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	}
	if cmd.HasSubCommands() {
		cmd.Args = unknownVerb
		cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		return
	}
	cmd.Args = positional(cmd)
	// cobra checks required flags after PreRunE, with an error of its own: check them
	// here first, so a missing one is a usage error too.
	cmd.PreRunE = func(c *cobra.Command, _ []string) error {
		for _, check := range []func() error{c.ValidateRequiredFlags, c.ValidateFlagGroups} {
			if err := check(); err != nil {
				return usageErrorf(c, "%v", err)
			}
		}
		return nil
	}
}

// unknownVerb refuses any argument of a group of verbs: it is a verb the group lacks.
func unknownVerb(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageError{cmd: cmd, msg: msg}
}

// positional checks a verb's arguments against the names in its Use line, the one place
// that states them: NAME is required, NAME... is one or more, [NAME] is optional and
// [NAME...] any number. Flags in the line (-o DIR, --password-stdin, [flags]) and "--"
// are not arguments.
func positional(cmd *cobra.Command) cobra.PositionalArgs {
	var required []string
	optional, variadic := 0, false
	words := strings.Fields(cmd.Use)[1:]
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--" || w == "[flags]":
			continue
		case strings.HasPrefix(w, "-"):
			if takesValue(cmd, w) {
				i++ // the flag's value, such as DIR of -o DIR
			}
			continue
		}
		name, opt := strings.CutPrefix(w, "[")
		name = strings.TrimSuffix(name, "]")
		name, many := strings.CutSuffix(name, "...")
		switch {
		case many:
			variadic = true
			if !opt {
				required = append(required, name)
			}
		case opt:
			optional++
		default:
			required = append(required, name)
		}
	}
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < len(required) {
			return usageErrorf(cmd, "missing %s", andList(required[len(args):]))
		}
		if most := len(required) + optional; !variadic && len(args) > most {
			extra := args[most:]
			quoted := make([]string, len(extra))
			for i, a := range extra {
				quoted[i] = fmt.Sprintf("%q", a)
			}
			noun := "argument"
			if len(extra) > 1 {
				noun = "arguments"
			}
			return usageErrorf(cmd, "unexpected %s %s", noun, strings.Join(quoted, " "))
		}
		return nil
	}
}

// takesValue reports whether the flag word of a Use line (-o, --output) takes a value.
func takesValue(cmd *cobra.Command, word string) bool {
	name := strings.TrimLeft(word, "-")
	f := cmd.Flags().Lookup(name)
	if !strings.HasPrefix(word, "--") && len(name) == 1 {
		f = cmd.Flags().ShorthandLookup(name)
	}
	return f != nil && f.Value.Type() != "bool"
}

// andList joins names as "A", "A and B", "A, B and C".
func andList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
