package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/difyops/terraform-provider-dify/dify"
)

// redactor removes the API key from any text that leaves the provider. The
// dify client never puts the key into errors, but a proxy or a server echoing
// the Authorization header could; diagnostics must never show it.
type redactor string

// clean is what every diagnostic detail from server text goes through: the
// key removed, and terminal control characters escaped (newlines kept).
func (r redactor) clean(s string) string {
	s = terminalSafe(s, true)
	if len(r) < 4 {
		return s
	}
	return strings.ReplaceAll(s, string(r), "[redacted api key]")
}

// terminalSafe makes text from a server (an answer, an annotation, a tool
// result, an error message) safe to print on a terminal or in a CI log:
// C0 and C1 control characters, DEL, bidirectional overrides and invalid
// UTF-8 are written as visible escapes (\x1b, \u009b, \u202e), so an
// answer cannot set the window title, clear the screen, colour the log,
// ring the bell, overwrite a line with \r or reorder text. A tab is kept;
// with keepNewlines "\n" (and "\r\n", as "\n") too, for multi-line
// diagnostics; without, a newline is escaped, so one progress message stays
// one line.
func terminalSafe(s string, keepNewlines bool) string {
	if keepNewlines {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	clean := true
	for i, r := range s {
		if r == utf8.RuneError || unsafeRune(r, keepNewlines) {
			if _, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size <= 1 {
				clean = false
				break
			}
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r, keepNewlines) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r, keepNewlines):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func unsafeRune(r rune, keepNewlines bool) bool {
	switch {
	case r == '\t', r == '\n' && keepNewlines:
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional marks and overrides
	}
	return false
}

// describeError renders err for a diagnostic detail: the HTTP status, the
// Dify code and message for API errors (docs/api §1.4), what was and was not
// retried, and a next step.
func describeError(err error, next string) string {
	var b strings.Builder
	var apiErr *dify.APIError
	retried := retrySentence(err)
	switch {
	case errors.As(err, &apiErr):
		if apiErr.Status > 0 {
			fmt.Fprintf(&b, "Dify answered HTTP %d", apiErr.Status)
		} else {
			b.WriteString("Dify reported an error")
		}
		if apiErr.Code != "" {
			fmt.Fprintf(&b, " with code %q", apiErr.Code)
		}
		if apiErr.Message != "" {
			fmt.Fprintf(&b, ": %s", apiErr.Message)
		} else {
			b.WriteString(" (no message)")
		}
		if apiErr.Params != "" {
			fmt.Fprintf(&b, " (parameter %q)", apiErr.Params)
		}
		b.WriteString(".")
		if hint := statusHint(apiErr, retried); hint != "" {
			b.WriteString("\n\n" + hint)
		}
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(&b, "The operation did not finish in time: %v.", err)
		if retried != "" {
			b.WriteString("\n\n" + retried)
		}
	default:
		fmt.Fprintf(&b, "The request did not get a Dify answer: %v.", err)
		if retried != "" {
			b.WriteString("\n\n" + retried)
		}
		b.WriteString("\n\nCheck that base_url (or DIFY_BASE_URL) points at a reachable Dify Service API, including the /v1 suffix.")
	}
	if next != "" {
		b.WriteString("\n\n" + next)
	}
	return b.String()
}

// statusHint suggests what to do about an error class; retried is
// retrySentence's account of the retries.
func statusHint(e *dify.APIError, retried string) string {
	switch {
	case e.Status == 401:
		return "Check the API key (api_key or " + EnvAPIKey + "): it must be the Service API key of the app (\"app-...\")."
	case e.Status == 403:
		return "The app refused the key: it may be deleted, disabled for API access, or in an archived workspace. Check the app in the Dify console."
	case e.Status == 429:
		return joinSentences("Dify is rate limiting this app.", retried,
			"Wait and run Terraform again, or raise retry_max_attempts and retry_max_delay (and the resource's timeout) so the provider waits longer.")
	case e.Status >= 500:
		return joinSentences("Dify had a server-side failure.", retried, "Try again later or check the Dify server logs.")
	}
	return ""
}

func joinSentences(parts ...string) string {
	out := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// retrySentence says what the client did about a failure that retrying
// could have helped with (a 429, a 5xx, a transport failure), from the
// RetryReport it attached: how many attempts were made, or why the request
// was sent only once. Other failures (a 400, a 404) get "": retrying them
// is not a question.
func retrySentence(err error) string {
	rep, ok := dify.RetryReportOf(err)
	if !ok {
		return ""
	}
	apiErr, isAPI := dify.AsAPIError(err)
	if isAPI && apiErr.Status != 429 && apiErr.Status < 500 {
		return ""
	}
	if rep.Attempts > 1 {
		s := fmt.Sprintf("The provider made %d attempts (retry_max_attempts = %d)", rep.Attempts, rep.MaxAttempts)
		switch rep.Stop {
		case dify.RetryNoTime:
			return s + fmt.Sprintf("; it did not make another because the next wait (%s) would have passed the timeout.", rep.Wait)
		case dify.RetryCanceled:
			return s + "; the operation's timeout ended while it waited for the next."
		}
		return s + "; each one failed."
	}
	switch rep.Stop {
	case dify.RetryExhausted:
		return fmt.Sprintf("The request was sent once and not retried: retries are off (retry_max_attempts = %d).", rep.MaxAttempts)
	case dify.RetryNoTime:
		return fmt.Sprintf("The request was sent once and not retried: the wait before a retry (%s) would have passed the timeout.", rep.Wait)
	case dify.RetryCanceled:
		return "The request was sent once; the operation's timeout ended while the provider waited to retry it."
	case dify.RetryBodySent:
		return "The request was sent once and not retried: an upload's bytes are streamed once and had already been sent."
	}
	if rep.CreatesOnce {
		return "The request was sent once and not retried: it creates something, and this answer does not prove that Dify created nothing, " +
			"so sending it again could create a second one."
	}
	return "The request was sent once and not retried."
}

// addError appends an error diagnostic whose detail describes err, with the
// API key removed.
func (r redactor) addError(diags *diag.Diagnostics, summary string, err error, next string) {
	diags.AddError(summary, r.clean(describeError(err, next)))
}
