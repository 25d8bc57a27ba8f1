package provider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

var (
	_ resource.ResourceWithConfigure        = &fileResource{}
	_ resource.ResourceWithImportState      = &fileResource{}
	_ resource.ResourceWithModifyPlan       = &fileResource{}
	_ resource.ResourceWithConfigValidators = &fileResource{}
	_ resource.ResourceWithValidateConfig   = &fileResource{}
)

// NewFileResource is the dify_file resource.
func NewFileResource() resource.Resource { return &fileResource{} }

type fileResource struct{ data *providerData }

type fileModel struct {
	ID            types.String `tfsdk:"id"`
	Source        types.String `tfsdk:"source"`
	Content       types.String `tfsdk:"content"`
	ContentWO     types.String `tfsdk:"content_wo"`
	ContentWOVer  types.Int64  `tfsdk:"content_wo_version"`
	ContentBase64 types.String `tfsdk:"content_base64"`
	Filename      types.String `tfsdk:"filename"`
	User          types.String `tfsdk:"user"`
	Name          types.String `tfsdk:"name"`
	Size          types.Int64  `tfsdk:"size"`
	Extension     types.String `tfsdk:"extension"`
	MimeType      types.String `tfsdk:"mime_type"`
	CreatedBy     types.String `tfsdk:"created_by"`
	CreatedAt     types.Int64  `tfsdk:"created_at"`
	SourceURL     types.String `tfsdk:"source_url"`
	Sha256        types.String `tfsdk:"sha256"`
}

var filenameRE = regexp.MustCompile(`^[^/\\]+$`)

func (r *fileResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_file"
}

func (r *fileResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	computedString := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Uploads a file to the Dify app (`POST /files/upload`) so a " +
			"`dify_conversation` can reference it in `files`.\n\n" +
			"Give exactly one of `source` (a local path), `content_wo` (UTF-8 text, write-only), `content` (UTF-8 text) or " +
			"`content_base64` (binary); `filename` names the upload and is required with the last three.\n\n" +
			"**Keep the bytes out of state.** `content` and `content_base64` are stored in Terraform state and saved plan " +
			"files as given (up to Dify's 15 MB document limit). `source` stores only the path and the `sha256` of the file; " +
			"`content_wo` (Terraform >= 1.11) is never stored: only its `sha256` is, and `content_wo_version` decides " +
			"when it is uploaded again. On Terraform < 1.11 and OpenTofu < 1.11, which have no write-only attributes, use `source` " +
			"(for text made in the configuration, write it with the `local_file` resource and pass its path).\n\n" +
			"The `sha256` of the content is computed at plan time, so editing the local file replaces the resource. " +
			"Files over Dify's size limit for their category (images 10 MB, audio 50 MB, video 100 MB, other files 15 MB, " +
			"or the server's own limits from `/parameters`) are rejected at plan time.\n\n" +
			"**Lifecycle limits of the API.** Dify has no endpoint to read or delete an uploaded file. " +
			"Refresh therefore keeps the state as recorded at upload; destroying the resource only removes it from " +
			"Terraform state (with a warning) and the file stays in Dify's storage. " +
			"Import is not supported, because nothing about an existing upload can be read back by its id. " +
			"Every argument forces a new upload when changed.",
		Attributes: map[string]schema.Attribute{
			"id": computedString("The upload's id; pass it to `dify_conversation.files`."),
			"source": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Path of a local file to upload. It must exist at plan time. " +
					"Conflicts with `content` and `content_base64`.",
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"content": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Text content to upload (sent as UTF-8). Requires `filename`. Stored in state and plan files as given; " +
					"use `source`, or `content_wo` on Terraform >= 1.11, to keep the bytes out of them.",
				DeprecationMessage: "dify_file.content stores the uploaded bytes in Terraform state and plan files. " +
					"Use source (a local path; any Terraform or OpenTofu) or content_wo with content_wo_version (Terraform >= 1.11) instead.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"content_wo": schema.StringAttribute{
				Optional:  true,
				WriteOnly: true,
				MarkdownDescription: "Text content to upload (sent as UTF-8), write-only: Terraform >= 1.11 passes it to the provider " +
					"without storing it in state or plan files. Requires `filename` and `content_wo_version`. Because Terraform " +
					"keeps no copy to compare with, a change alone uploads nothing: change `content_wo_version` to upload the new content.",
				Validators: []validator.String{stringvalidator.AlsoRequires(path.MatchRoot("content_wo_version"))},
			},
			"content_wo_version": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "Version of `content_wo`; changing it replaces the resource, uploading `content_wo` again. " +
					"Stored in state. Requires `content_wo`.",
				Validators:    []validator.Int64{int64validator.AlsoRequires(path.MatchRoot("content_wo"))},
				PlanModifiers: []planmodifier.Int64{int64planmodifier.RequiresReplace()},
			},
			"content_base64": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Base64-encoded (standard alphabet, padded) binary content to upload. Requires `filename`. " +
					"Stored in state and plan files as given; prefer `source` for binary files.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"filename": schema.StringAttribute{
				Optional: true,
				Computed: true,
				MarkdownDescription: "File name sent to Dify; its extension decides the size limit and the type Dify detects. " +
					"Must not contain `/` or `\\`. Defaults to the base name of `source`; required with `content` or `content_base64`.",
				Validators: []validator.String{stringvalidator.RegexMatches(filenameRE, "must be a file name without / or \\")},
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.UseStateForUnknown(),
					stringplanmodifier.RequiresReplace(),
				},
			},
			"user": schema.StringAttribute{
				Optional: true,
				Computed: true,
				MarkdownDescription: "End user the file belongs to; a conversation can only use files of its own user. " +
					"Defaults to the provider's `user` (`" + EnvUser + "`, then `" + DefaultUser + "`).",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.UseStateForUnknown(),
					stringplanmodifier.RequiresReplace(),
				},
			},
			"name":      computedString("File name as Dify recorded it."),
			"extension": computedString("Extension without the dot, as Dify detected it (null when it has none)."),
			"mime_type": computedString("MIME type Dify recorded (null when unknown)."),
			"size": schema.Int64Attribute{Computed: true, MarkdownDescription: "Size in bytes as Dify recorded it.",
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()}},
			"created_by": computedString("Id of the end user that uploaded the file; read it with the `dify_end_user` data source."),
			"created_at": schema.Int64Attribute{Computed: true, MarkdownDescription: "Upload time, Unix epoch seconds.",
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()}},
			"source_url": computedString("Signed preview URL Dify returned at upload time; it may expire."),
			"sha256": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "Hex SHA-256 of the uploaded bytes, computed at plan time from `source`, `content` or " +
					"`content_base64`, where a change replaces the resource; with `content_wo`, the hash of what was uploaded " +
					"(a change of `content_wo_version` replaces the resource).",
			},
		},
	}
}

func (r *fileResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configureData(req.ProviderData, &resp.Diagnostics)
}

func (r *fileResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{
		resourcevalidator.ExactlyOneOf(
			path.MatchRoot("source"),
			path.MatchRoot("content"),
			path.MatchRoot("content_base64"),
			path.MatchRoot("content_wo"),
		),
	}
}

func (r *fileResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var cfg fileModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	inline := !cfg.Content.IsNull() || !cfg.ContentBase64.IsNull() || !cfg.ContentWO.IsNull()
	if inline && cfg.Filename.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("filename"), "Missing filename",
			"A dify_file with content, content_wo or content_base64 needs filename, for example \"notes.md\": Dify requires a file name "+
				"and uses its extension to pick the size limit and file type.")
	}
	if !cfg.ContentBase64.IsNull() && !cfg.ContentBase64.IsUnknown() {
		if _, err := base64.StdEncoding.DecodeString(cfg.ContentBase64.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("content_base64"), "Invalid base64 content",
				fmt.Sprintf("content_base64 is not standard padded base64: %v. Produce it with filebase64() or base64encode().", err))
		}
	}
}

// payload is the content a dify_file uploads, as known at plan or apply time.
type payload struct {
	filename string
	size     int64
	sha256   string
	open     func() (io.ReadCloser, error)
}

// resolvePayload reads the configured source far enough to know its size and
// hash. known is false while the content depends on unknown values.
func resolvePayload(m fileModel) (p payload, known bool, attr string, err error) {
	switch {
	case !m.Source.IsNull():
		if m.Source.IsUnknown() {
			return p, false, "", nil
		}
		src := m.Source.ValueString()
		st, err := os.Stat(src)
		if err != nil {
			return p, false, "source", fmt.Errorf("cannot read source %q: %w", src, err)
		}
		if !st.Mode().IsRegular() {
			return p, false, "source", fmt.Errorf("source %q is not a regular file", src)
		}
		p.filename = filepath.Base(src)
		p.size = st.Size()
		p.open = func() (io.ReadCloser, error) { return os.Open(src) }
	case !m.Content.IsNull(), !m.ContentWO.IsNull():
		text := m.Content // or its write-only twin: the same text, kept out of state
		if text.IsNull() {
			text = m.ContentWO
		}
		if text.IsUnknown() {
			return p, false, "", nil
		}
		b := []byte(text.ValueString())
		p.size = int64(len(b))
		p.open = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	case !m.ContentBase64.IsNull():
		if m.ContentBase64.IsUnknown() {
			return p, false, "", nil
		}
		b, err := base64.StdEncoding.DecodeString(m.ContentBase64.ValueString())
		if err != nil {
			return p, false, "content_base64", fmt.Errorf("content_base64 is not valid base64: %w", err)
		}
		p.size = int64(len(b))
		p.open = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	default:
		return p, false, "", nil
	}
	if !m.Filename.IsNull() && !m.Filename.IsUnknown() {
		p.filename = m.Filename.ValueString()
	}
	return p, true, "", nil
}

// hash reads the payload once and returns its hex SHA-256.
func (p *payload) hash() (string, error) {
	rc, err := p.open()
	if err != nil {
		return "", err
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	if err != nil {
		return "", err
	}
	p.size = n
	p.sha256 = hex.EncodeToString(h.Sum(nil))
	return p.sha256, nil
}

func (r *fileResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var plan, cfg fileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	creating := req.State.Raw.IsNull()
	var state fileModel
	if !creating {
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	}

	if creating && cfg.User.IsNull() && r.data != nil {
		plan.User = types.StringValue(r.data.user)
	}

	p, known, attr, err := resolvePayload(cfg)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root(attr), "Invalid dify_file content",
			err.Error()+". Fix the path or content; the file must exist when Terraform plans.")
		return
	}
	if !known {
		plan.Sha256 = types.StringUnknown()
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	if cfg.Filename.IsNull() && p.filename != "" {
		plan.Filename = types.StringValue(p.filename)
	}
	if p.filename != "" {
		var limits dify.SystemParameters
		if r.data != nil {
			limits = r.data.params.limits(ctx)
		} else {
			limits = defaultSystemParameters
		}
		if err := checkUploadSize(p.filename, p.size, limits); err != nil {
			at := path.Root("source")
			if !cfg.Content.IsNull() {
				at = path.Root("content")
			} else if !cfg.ContentWO.IsNull() {
				at = path.Root("content_wo")
			} else if !cfg.ContentBase64.IsNull() {
				at = path.Root("content_base64")
			}
			resp.Diagnostics.AddAttributeError(at, "File too large for Dify", err.Error()+". Split or compress the file.")
			return
		}
	}
	sum, err := p.hash()
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("source"), "Invalid dify_file content",
			fmt.Sprintf("Reading the content to hash it failed: %v.", err))
		return
	}
	if !creating && !cfg.ContentWO.IsNull() {
		// Write-only: Terraform keeps no copy, so a changed content_wo is
		// not a change; content_wo_version replaces (and then plans a
		// create, with a fresh hash).
		sum = state.Sha256.ValueString()
	}
	plan.Sha256 = types.StringValue(sum)
	if !creating && state.Sha256.ValueString() != sum {
		resp.RequiresReplace = append(resp.RequiresReplace, path.Root("sha256"))
	}
	if !creating && !plan.Sha256.Equal(state.Sha256) {
		// A replacement plans fresh computed values.
		for _, a := range []*types.String{&plan.ID, &plan.Name, &plan.Extension, &plan.MimeType, &plan.CreatedBy, &plan.SourceURL} {
			*a = types.StringUnknown()
		}
		plan.Size, plan.CreatedAt = types.Int64Unknown(), types.Int64Unknown()
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *fileResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan, cfg fileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// A write-only value is only in the configuration, never in the plan.
	plan.ContentWO = cfg.ContentWO
	p, known, attr, err := resolvePayload(plan)
	if err != nil || !known {
		if err == nil {
			err = fmt.Errorf("the content is still unknown at apply time")
		}
		resp.Diagnostics.AddAttributeError(path.Root(attr), "Unable to upload file", err.Error()+".")
		return
	}
	if p.filename == "" {
		resp.Diagnostics.AddAttributeError(path.Root("filename"), "Unable to upload file", "No filename is known for the upload; set filename.")
		return
	}
	if err := checkUploadSize(p.filename, p.size, r.data.params.limits(ctx)); err != nil {
		resp.Diagnostics.AddError("Unable to upload file", err.Error()+".")
		return
	}
	// Hash before uploading: Dify cannot delete files, so a source edited
	// between plan and apply must fail before it leaves an orphan upload.
	before, err := p.hash()
	if err != nil {
		resp.Diagnostics.AddError("Unable to upload file", fmt.Sprintf("Reading %q failed: %v.", p.filename, err))
		return
	}
	if !plan.Sha256.IsUnknown() && plan.Sha256.ValueString() != before {
		resp.Diagnostics.AddAttributeError(path.Root("source"), "File changed after plan",
			fmt.Sprintf("The content's SHA-256 is %s now but was %s when Terraform planned. Nothing was uploaded; run terraform apply again.",
				before, plan.Sha256.ValueString()))
		return
	}
	rc, err := p.open()
	if err != nil {
		resp.Diagnostics.AddError("Unable to upload file", fmt.Sprintf("Opening %q failed: %v.", p.filename, err))
		return
	}
	defer rc.Close()
	h := sha256.New()
	user := r.data.userOr(plan.User.ValueString())
	body := &sizedReader{r: io.TeeReader(rc, h), n: p.size}
	res, err := r.data.client.UploadFile(ctx, dify.Upload{Filename: p.filename, Reader: body, User: user})
	if err != nil {
		next := fmt.Sprintf("Uploading %q (%s) as user %q failed before Dify stored anything; nothing was recorded in state.", p.filename, humanSize(p.size), user)
		if !dify.ProvesNothingCreated(err) {
			next = fmt.Sprintf("Uploading %q (%s) as user %q failed, and Dify may have stored the file anyway; nothing was recorded in state. "+
				"Dify's Service API cannot list, import or delete uploads, so such a file stays in Dify's storage; run terraform apply again to upload it anew.",
				p.filename, humanSize(p.size), user)
		}
		r.data.redact.addError(&resp.Diagnostics, "Unable to upload file", err, next)
		return
	}
	if sent := hex.EncodeToString(h.Sum(nil)); sent != before {
		resp.Diagnostics.AddError("File changed during upload",
			fmt.Sprintf("The bytes sent hash to %s, not %s: the file changed while it was uploaded. Dify stored it as file %s, which "+
				"cannot be deleted through the API; it was not recorded in state. Run terraform apply again.", sent, before, res.ID))
		return
	}
	plan.User = types.StringValue(user)
	plan.Filename = types.StringValue(p.filename)
	plan.Sha256 = types.StringValue(before)
	plan.ContentWO = types.StringNull() // never stored
	setFileResult(&plan, res)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(setFileIdentity(ctx, resp.Identity, plan.ID.ValueString())...)
}

func setFileResult(m *fileModel, res *dify.FileUploadResult) {
	m.ID = types.StringValue(res.ID)
	m.Name = types.StringValue(res.Name)
	m.Size = types.Int64Value(res.Size)
	m.Extension = types.StringPointerValue(res.Extension)
	m.MimeType = types.StringPointerValue(res.MimeType)
	m.CreatedBy = types.StringPointerValue(res.CreatedBy)
	m.CreatedAt = types.Int64Value(res.CreatedAt)
	m.SourceURL = types.StringValue(res.SourceURL)
}

// Read keeps the recorded state: Dify has no API that returns an uploaded
// file by id (docs/api §9; the preview endpoint is not available to New Agent apps).
func (r *fileResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state fileModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	resp.Diagnostics.Append(setFileIdentity(ctx, resp.Identity, state.ID.ValueString())...)
}

// ImportState refuses with the reason: Dify's Service API has no route that
// returns an upload by its id (only POST /files/upload and the preview of a
// file attached to a message), so nothing of an existing upload can be read
// back. Without this method Terraform would tell users to contact the
// provider's developers.
func (r *fileResource) ImportState(_ context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.AddError("dify_file cannot be imported",
		fmt.Sprintf("Dify's Service API cannot read an uploaded file back: it has no route that returns an upload by its id, so nothing about %q "+
			"(its name, size, type or content) could be put in state. Upload the file again with a new dify_file resource; the old upload "+
			"stays in Dify either way (the Service API cannot delete uploads).", req.ID))
}

// Update only runs when nothing that reaches Dify changed (every argument
// forces replacement), so it records the plan.
func (r *fileResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan fileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(setFileIdentity(ctx, resp.Identity, plan.ID.ValueString())...)
}

func (r *fileResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state fileModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.AddWarning("Dify file left in place",
		fmt.Sprintf("Dify's Service API has no endpoint to delete an uploaded file, so file %s (%s) was only removed from Terraform state. "+
			"It stays in the app's storage until Dify's own cleanup removes it; conversations that used it keep their reference.",
			state.ID.ValueString(), strings.TrimSpace(state.Name.ValueString())))
}

// sizedReader announces its length so the upload carries a Content-Length
// instead of a chunked body, which some Dify deployments' servers reject.
type sizedReader struct {
	r io.Reader
	n int64
}

func (s *sizedReader) Read(p []byte) (int, error) { return s.r.Read(p) }
func (s *sizedReader) Len() int                   { return int(s.n) }
