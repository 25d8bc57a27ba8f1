package provider

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/difyops/terraform-provider-dify/dify"
)

// Upload size limits by extension category (docs/api §9.1). Dify Cloud uses these
// defaults; self-hosted servers may change them, and /parameters echoes the
// values in force (docs/api §14 system_parameters), which the provider prefers.
const mb = 1 << 20

var defaultSystemParameters = dify.SystemParameters{
	ImageFileSizeLimit: 10,
	VideoFileSizeLimit: 100,
	AudioFileSizeLimit: 50,
	FileSizeLimit:      15,
}

// Extension categories of docs/api §9.1 (case-insensitive, without the dot).
var (
	imageExtensions = setOf("jpg", "jpeg", "png", "webp", "gif", "svg")
	videoExtensions = setOf("mp4", "mov", "mpeg", "webm")
	audioExtensions = setOf("mp3", "m4a", "wav", "amr", "mpga")
)

func setOf(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// uploadCategory names the size category of filename and its limit in bytes.
func uploadCategory(filename string, p dify.SystemParameters) (string, int64) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(filename), "."))
	pick := func(v, def int) int64 {
		if v <= 0 {
			v = def
		}
		return int64(v) * mb
	}
	switch {
	case imageExtensions[ext]:
		return "image", pick(p.ImageFileSizeLimit, defaultSystemParameters.ImageFileSizeLimit)
	case videoExtensions[ext]:
		return "video", pick(p.VideoFileSizeLimit, defaultSystemParameters.VideoFileSizeLimit)
	case audioExtensions[ext]:
		return "audio", pick(p.AudioFileSizeLimit, defaultSystemParameters.AudioFileSizeLimit)
	default:
		return "document", pick(p.FileSizeLimit, defaultSystemParameters.FileSizeLimit)
	}
}

// checkUploadSize returns a user-facing reason when size exceeds the limit.
func checkUploadSize(filename string, size int64, p dify.SystemParameters) error {
	cat, limit := uploadCategory(filename, p)
	if size > limit {
		return fmt.Errorf("%q is %s, over Dify's %s limit of %d MB for %s files (the server would answer 413 file_too_large)",
			filename, humanSize(size), cat, limit/mb, cat)
	}
	return nil
}

func humanSize(n int64) string {
	switch {
	case n >= mb:
		return fmt.Sprintf("%.1f MB (%d bytes)", float64(n)/mb, n)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB (%d bytes)", float64(n)/(1<<10), n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// appParameters fetches /parameters once per provider lifetime (one plan or
// apply): the server's upload limits and the app's input form, which
// dify_conversation compares configured inputs against.
type appParameters struct {
	client interface {
		AppParameters(ctx context.Context) (*dify.AppParameters, error)
	}
	once   sync.Once
	params *dify.AppParameters
	err    error
}

func newAppParameters(c *dify.Client) *appParameters { return &appParameters{client: c} }

func (a *appParameters) get(ctx context.Context) (*dify.AppParameters, error) {
	if a == nil {
		return nil, errors.New("the provider is not configured")
	}
	a.once.Do(func() { a.params, a.err = a.client.AppParameters(ctx) })
	return a.params, a.err
}

// limits are the server's upload limits, falling back to the documented
// defaults.
func (a *appParameters) limits(ctx context.Context) dify.SystemParameters {
	p, err := a.get(ctx)
	if err != nil {
		tflog.Warn(ctx, "could not read upload limits from /parameters; using Dify's defaults", map[string]any{"error": err.Error()})
		return defaultSystemParameters
	}
	return p.SystemParameters
}
