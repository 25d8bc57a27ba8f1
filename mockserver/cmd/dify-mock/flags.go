package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// commandFlags is one subcommand's flag set. Every subcommand declares its
// flags on one, so they all parse the same way and print help in the same
// format:
//
//	Usage: dify-mock NAME ARGS
//
//	ABOUT
//
//	Flags:
//	  --name TYPE
//	        what it does (default X)
//	        env DIFY_MOCK_NAME
//
// A flag gets an environment variable when it is named in env (see
// withEnv); the variable sets the flag's value, and the command line wins.
type commandFlags struct {
	fs     *flag.FlagSet
	name   string // subcommand name, for messages
	usage  string // the Usage: line, without "Usage: "
	about  string // what the subcommand does, before the flag list
	footer string // printed after the flag list, e.g. examples
	env    map[string]bool
	args   []string // positional arguments, after parse
}

// newFlags starts the flag set of `dify-mock NAME`; usage is the synopsis
// ("dify-mock NAME [flags] ARGS") and about one or more paragraphs.
func newFlags(name, usage, about string) *commandFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The flag package's own messages are replaced by ours (parse).
	fs.SetOutput(io.Discard)
	return &commandFlags{fs: fs, name: name, usage: usage, about: about, env: map[string]bool{}}
}

// envPrefix names the environment variables: --run-timeout ↔ DIFY_MOCK_RUN_TIMEOUT.
const envPrefix = "DIFY_MOCK_"

func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// withEnv lets DIFY_MOCK_<NAME> set each named flag (already declared).
// Only flags whose variable cannot surprise another subcommand get one:
// serve's --addr and record's --addr would otherwise share DIFY_MOCK_ADDR.
func (c *commandFlags) withEnv(names ...string) *commandFlags {
	for _, n := range names {
		if c.fs.Lookup(n) == nil {
			panic("dify-mock: withEnv: no flag --" + n)
		}
		c.env[n] = true
	}
	return c
}

// envSetter is a flag value that reads its environment variable its own
// way (listFlag: comma-separated, replaced by the command line).
type envSetter interface {
	setFromEnv(v string) error
}

// parse applies the environment (through getenv), then args. It returns
// flag.ErrHelp after printing the help to stdout for -h/--help, and a usage
// error (already printed to stderr) for anything else; the caller turns
// those into exit codes 0 and 2 (see exitCode).
func (c *commandFlags) parse(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var envErr error
	c.fs.VisitAll(func(f *flag.Flag) {
		if !c.env[f.Name] || envErr != nil {
			return
		}
		v := getenv(envName(f.Name))
		if v == "" {
			return
		}
		var err error
		if s, ok := f.Value.(envSetter); ok {
			err = s.setFromEnv(v)
		} else {
			err = f.Value.Set(v)
		}
		if err != nil {
			envErr = fmt.Errorf("%s=%q: %v", envName(f.Name), v, err)
		}
	})
	if envErr != nil {
		return c.usageError(stderr, envErr.Error())
	}
	if err := c.parseArgs(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.writeHelp(stdout)
			return flag.ErrHelp
		}
		return c.usageError(stderr, err.Error())
	}
	return nil
}

// parseArgs parses flags anywhere on the command line (`lint a.yaml -h`,
// `author a.yaml -o out/`), collecting the other arguments in c.args;
// after "--" everything is an argument.
func (c *commandFlags) parseArgs(args []string) error {
	c.args = nil
	for {
		if err := c.fs.Parse(args); err != nil {
			return err
		}
		rest := c.fs.Args()
		if len(rest) == 0 {
			return nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			c.args = append(c.args, rest...)
			return nil
		}
		c.args = append(c.args, rest[0])
		args = rest[1:]
	}
}

// usageError prints "dify-mock NAME: msg", the usage line and where the
// help is to w, and returns an error that exitCode maps to 2.
func (c *commandFlags) usageError(w io.Writer, msg string) error {
	fmt.Fprintf(w, "dify-mock %s: %s\nUsage: %s\nRun 'dify-mock help %s' for details.\n", c.name, msg, c.usage, c.name)
	return errUsage{msg}
}

// errUsage is a command line the subcommand cannot run (exit code 2).
type errUsage struct{ msg string }

func (e errUsage) Error() string { return e.msg }

// exitCode maps parse's result to the process exit code when parsing did
// not succeed: 0 after --help, 2 for a usage error.
func exitCode(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

func (c *commandFlags) writeHelp(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", c.usage, strings.TrimRight(c.about, "\n"))
	if c.hasFlags() {
		fmt.Fprintf(w, "\nFlags:\n")
		c.writeFlags(w)
	}
	if c.footer != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.footer, "\n"))
	}
}

func (c *commandFlags) hasFlags() bool {
	n := 0
	c.fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// writeFlags prints every flag in the one format (sorted by name):
// "--name TYPE", then the usage with its default, then its variable.
func (c *commandFlags) writeFlags(w io.Writer) {
	c.fs.VisitAll(func(f *flag.Flag) {
		dashes := "--"
		if len(f.Name) == 1 {
			dashes = "-"
		}
		typ, usage := flag.UnquoteUsage(f)
		if typ != "" {
			typ = " " + typ
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "[]" && f.DefValue != "false" {
			def = fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "  %s%s%s\n", dashes, f.Name, typ)
		for _, line := range wrap(usage+def, 70) {
			fmt.Fprintf(w, "        %s\n", line)
		}
		if c.env[f.Name] {
			fmt.Fprintf(w, "        env %s\n", envName(f.Name))
		}
	})
}

// listFlag is a repeatable string flag. Its environment variable holds a
// comma-separated list, and values given on the command line replace the
// environment's rather than adding to them.
type listFlag struct {
	values  []string
	fromEnv bool
}

func (l *listFlag) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(l.values, ",")
}

func (l *listFlag) Set(v string) error {
	if l.fromEnv {
		l.values, l.fromEnv = nil, false
	}
	l.values = append(l.values, v)
	return nil
}

func (l *listFlag) setFromEnv(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			l.values = append(l.values, s)
		}
	}
	l.fromEnv = true
	return nil
}

// noArgs is a usage error when the command line left positional arguments.
func (c *commandFlags) noArgs(stderr io.Writer) error {
	if len(c.args) > 0 {
		return c.usageError(stderr, fmt.Sprintf("unexpected argument %q", c.args[0]))
	}
	return nil
}
