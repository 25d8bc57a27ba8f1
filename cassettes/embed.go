// Package cassettes embeds dify-mock's built-in cassettes: the app
// description (app.yaml) and the chat cassettes the mock serves with zero
// configuration. See README.md in this folder for what each one shows and how
// it was made.
package cassettes

import (
	"embed"
	"io/fs"
)

//go:generate go run ../mockserver/internal/author/gencassettes

//go:embed *.yaml
var files embed.FS

// FS returns the built-in cassettes, one *.yaml file each at the root.
func FS() fs.FS { return files }
