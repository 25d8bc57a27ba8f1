// Package console is dify-mock's web console: plain HTML, CSS and
// JavaScript embedded in the binary (no build step, no CDN, no network
// fetches besides the mock's own control API). The control package serves
// it under /__mock/.
package console

import (
	"embed"
	"io/fs"
	"path"
	"strings"
)

//go:embed web
var files embed.FS

var types = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// Asset returns a console file and its content type; ok is false for a
// name that is not one of the console's files.
func Asset(name string) (data []byte, contentType string, ok bool) {
	name = path.Clean("/" + name)[1:]
	if name == "" || strings.HasPrefix(name, ".") {
		return nil, "", false
	}
	ct, known := types[path.Ext(name)]
	if !known {
		return nil, "", false
	}
	data, err := fs.ReadFile(files, "web/"+name)
	if err != nil {
		return nil, "", false
	}
	return data, ct, true
}
