package mockserver

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strconv"
	"strings"
	"sync"
)

// A tool file a cassette carries no bytes for is made up from its URL's
// extension (docs/mock/annotations.md#tool-files): a tiny valid file of that type,
// so an <img> decodes and a PDF opens, served with X-Dify-Mock-Synthesized.

// synthImage is an 8×8 square in the mock's placeholder colour: big enough
// to see in a screenshot, small enough to be a constant.
func synthImage() image.Image {
	img := image.NewPaletted(image.Rect(0, 0, 8, 8), color.Palette{color.RGBA{0x2f, 0x6f, 0xeb, 0xff}, color.White})
	for i := 0; i < 8; i++ {
		img.SetColorIndex(i, i, 1) // a diagonal, so the image is not one flat colour
	}
	return img
}

// webp1x1 is a 1×1 lossless WebP (26 bytes). The standard library has no
// WebP encoder; these bytes are the well-known smallest lossless image.
const webp1x1 = "UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA=="

// pdfMin is a one-page PDF with a correct cross-reference table.
func pdfMin() []byte {
	content := "BT /F1 12 Tf 20 50 Td (dify-mock synthesized file) Tj ET"
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		"<< /Length " + strconv.Itoa(len(content)) + " >>\nstream\n" + content + "\nendstream",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		b.WriteString(strconv.Itoa(i+1) + " 0 obj\n" + o + "\nendobj\n")
	}
	xref := b.Len()
	b.WriteString("xref\n0 " + strconv.Itoa(len(objs)+1) + "\n0000000000 65535 f \n")
	for _, off := range offsets {
		s := strconv.Itoa(off)
		b.WriteString(strings.Repeat("0", 10-len(s)) + s + " 00000 n \n")
	}
	b.WriteString("trailer\n<< /Size " + strconv.Itoa(len(objs)+1) + " /Root 1 0 R >>\nstartxref\n" + strconv.Itoa(xref) + "\n%%EOF\n")
	return b.Bytes()
}

type synthFile struct {
	mimeType string
	data     []byte
}

var (
	synthOnce  sync.Once
	synthByExt map[string]synthFile
)

// synthesizedFile is the made-up file for an extension: its bytes and
// mimetype (mimetypes.guess_type's answer for the types made here,
// application/octet-stream for the rest).
func synthesizedFile(ext string) (data []byte, mimeType string) {
	synthOnce.Do(func() {
		img := synthImage()
		enc := func(f func(*bytes.Buffer) error) []byte {
			var b bytes.Buffer
			if err := f(&b); err != nil {
				panic("synthesized image: " + err.Error()) // fixed inputs: cannot fail
			}
			return b.Bytes()
		}
		pngData := enc(func(b *bytes.Buffer) error { return png.Encode(b, img) })
		jpegData := enc(func(b *bytes.Buffer) error { return jpeg.Encode(b, img, nil) })
		gifData := enc(func(b *bytes.Buffer) error { return gif.Encode(b, img, nil) })
		webpData, _ := base64.StdEncoding.DecodeString(webp1x1)
		text := []byte("dify-mock synthesized file\n")
		synthByExt = map[string]synthFile{
			"png":  {"image/png", pngData},
			"jpg":  {"image/jpeg", jpegData},
			"jpeg": {"image/jpeg", jpegData},
			"gif":  {"image/gif", gifData},
			"webp": {"image/webp", webpData},
			"svg": {"image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8">` +
				`<rect width="8" height="8" fill="#2f6feb"/></svg>` + "\n")},
			"pdf":  {"application/pdf", pdfMin()},
			"txt":  {"text/plain", text},
			"md":   {"text/markdown", text},
			"csv":  {"text/csv", []byte("file,synthesized\ndify-mock,true\n")},
			"json": {"application/json", []byte(`{"synthesized":true}` + "\n")},
			"html": {"text/html", []byte("<!doctype html><p>dify-mock synthesized file</p>\n")},
			"htm":  {"text/html", []byte("<!doctype html><p>dify-mock synthesized file</p>\n")},
		}
	})
	if f, ok := synthByExt[strings.ToLower(ext)]; ok {
		return f.data, f.mimeType
	}
	return []byte("dify-mock synthesized file\n"), "application/octet-stream"
}
