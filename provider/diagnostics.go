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
// Dify code and message for API errors (docs/api §1.4), and a next step.
func describeError(err error, next string) string {
	var b strings.Builder
	var apiErr *dify.APIError
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
		if hint := statusHint(apiErr); hint != "" {
			b.WriteString("\n\n" + hint)
		}
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(&b, "The operation did not finish in time: %v.", err)
	default:
		fmt.Fprintf(&b, "The request did not get a Dify answer: %v.", err)
		b.WriteString("\n\nCheck that base_url (or DIFY_BASE_URL) points at a reachable Dify Service API, including the /v1 suffix.")
	}
	if next != "" {
		b.WriteString("\n\n" + next)
	}
	return b.String()
}

// statusHint suggests what to do about an error class.
func statusHint(e *dify.APIError) string {
	switch {
	case e.Status == 401:
		return "Check the API key (api_key or " + EnvAPIKey + "): it must be the Service API key of the app (\"app-...\")."
	case e.Status == 403:
		return "The app refused the key: it may be deleted, disabled for API access, or in an archived workspace. Check the app in the Dify console."
	case e.Status == 429:
		return "Dify is rate limiting this app. The provider already retried with backoff (retry_max_attempts, retry_max_delay); wait and run Terraform again, or raise those limits."
	case e.Status >= 500:
		return "Dify had a server-side failure. Read operations were retried (retry_max_attempts); try again later or check the Dify server logs."
	}
	return ""
}

// addError appends an error diagnostic whose detail describes err, with the
// API key removed.
func (r redactor) addError(diags *diag.Diagnostics, summary string, err error, next string) {
	diags.AddError(summary, r.clean(describeError(err, next)))
}
