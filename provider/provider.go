// Package provider implements the Terraform provider for the Dify Agent app
// Service API. Citations such as "docs/api §5" name sections of the project's
// API reference, docs/api/README.md.
package provider

import (
	"context"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/difyops/terraform-provider-dify/dify"
)

var (
	_ provider.Provider                   = &difyProvider{}
	_ provider.ProviderWithListResources  = &difyProvider{}
	_ provider.ProviderWithActions        = &difyProvider{}
	_ provider.ProviderWithValidateConfig = &difyProvider{}
)

// difyProvider is the dify provider; version is set by the release build.
type difyProvider struct {
	version string
}

// New returns a constructor for the provider, as providerserver expects.
func New(version string) func() provider.Provider {
	return func() provider.Provider {
		return &difyProvider{version: version}
	}
}

func (p *difyProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "dify"
	resp.Version = p.version
}

func (p *difyProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The Dify provider works with one Dify **Agent app** through its Service API " +
			"(the API keyed by an app API key, `app-...`). It reads the app's settings, its conversations and messages, " +
			"end users, feedback and annotations, and manages the runtime objects the API offers: conversations " +
			"(started by a first chat message), uploaded files, message feedback, annotations and the annotation reply " +
			"setting. With Terraform >= 1.14 it also lists conversations and annotations for `terraform query` and " +
			"sends chat messages as an action.\n\n" +
			"Every setting is optional and resolved as *configuration > environment variable > default*.",
		Attributes: map[string]schema.Attribute{
			"base_url": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Base URL of the Dify Service API, including `/v1`. " +
					"Defaults to the `" + EnvBaseURL + "` environment variable, then to `" + dify.DefaultBaseURL + "` (Dify Cloud). " +
					"For a self-hosted Dify use `https://<host>/v1`; for dify-mock `http://127.0.0.1:5001/v1`.",
			},
			"api_key": schema.StringAttribute{
				Optional:  true,
				Sensitive: true,
				MarkdownDescription: "The app's Service API key (`app-...`); one key selects one app. " +
					"Defaults to the `" + EnvAPIKey + "` environment variable; one of the two is required. " +
					"Prefer the environment variable so the key stays out of configuration files.",
			},
			"user": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Default end-user identifier for resources and data sources that do not set `user` " +
					"(conversations and files are scoped to an end user). " +
					"Defaults to the `" + EnvUser + "` environment variable, then to `" + DefaultUser + "`.",
			},
			"retry_max_attempts": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "Total attempts (the first included) for calls that are safe to repeat when Dify answers " +
					"429 or 5xx or the connection fails; `1` disables retries. Between 1 and 20. " +
					"A create (a chat message, an annotation) is sent again only after a 429 that proves nothing was created " +
					"(Dify's `too_many_requests`/`rate_limit_error`, or a `Retry-After`), never once it may have reached Dify. " +
					"Defaults to the `" + EnvRetryMaxAttempts + "` environment variable, then to `4`.",
			},
			"retry_max_delay": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Longest wait between two attempts, as a Go duration (`\"500ms\"`, `\"30s\"`). " +
					"Backoff is exponential with jitter and honours `Retry-After`, capped by this value. " +
					"Defaults to the `" + EnvRetryMaxDelay + "` environment variable, then to `\"30s\"`.",
			},
			"request_timeout": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "How long one HTTP attempt may wait for Dify's response headers, as a Go duration of at least `1s`. " +
					"It does not limit how long a chat stream runs once it has started; that is the `dify_conversation` create timeout. " +
					"Defaults to the `" + EnvRequestTimeout + "` environment variable, then to `\"60s\"`.",
			},
		},
	}
}

// ValidateConfig reports provider-block values that can never work at
// `terraform validate`, with the words Configure would use at plan
// (validateConfigured; one definition of each check).
func (p *difyProvider) ValidateConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(validateConfigured(cfg)...)
}

func (p *difyProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, diags := resolveSettings(cfg, os.Getenv)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	data, err := newProviderData(s, p.userAgent(req.TerraformVersion))
	if err != nil {
		redactor(s.APIKey).addError(&resp.Diagnostics, "Unable to create the Dify API client", err,
			"Check base_url ("+EnvBaseURL+") and api_key ("+EnvAPIKey+").")
		return
	}
	tflog.Debug(ctx, "configured Dify client", map[string]any{"base_url": redactURL(s.BaseURL), "user": s.User,
		"retry_max_attempts": s.RetryMaxAttempts, "retry_max_delay": s.RetryMaxDelay.String(), "request_timeout": s.RequestTimeout.String()})
	resp.DataSourceData = data
	resp.ResourceData = data
	resp.ListResourceData = data
	resp.ActionData = data
}

// userAgent names the provider release and the Terraform CLI driving it,
// e.g. "terraform-provider-dify/1.2.0 (+https://github.com/...) terraform/1.11.4".
func (p *difyProvider) userAgent(terraformVersion string) string {
	ua := "terraform-provider-dify/" + p.version + " (+" + dify.ProjectURL + ")"
	if terraformVersion != "" {
		ua += " terraform/" + terraformVersion
	}
	return ua
}

func (p *difyProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewConversationResource,
		NewFileResource,
		NewMessageFeedbackResource,
		NewAnnotationResource,
		NewAnnotationReplyResource,
	}
}

// ListResources serve `terraform query` (Terraform >= 1.14).
func (p *difyProvider) ListResources(context.Context) []func() list.ListResource {
	return []func() list.ListResource{
		NewConversationListResource,
		NewAnnotationListResource,
	}
}

// Actions run during apply (Terraform >= 1.14).
func (p *difyProvider) Actions(context.Context) []func() action.Action {
	return []func() action.Action{
		NewChatAction,
	}
}

func (p *difyProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewAppInfoDataSource,
		NewAppParametersDataSource,
		NewAppMetaDataSource,
		NewAppSiteDataSource,
		NewConversationsDataSource,
		NewMessagesDataSource,
		NewEndUserDataSource,
		NewServerDataSource,
		NewAppFeedbacksDataSource,
		NewAnnotationsDataSource,
	}
}

// providerData is what Configure hands to every resource and data source.
// One value lives for one Configure call, i.e. one Terraform graph walk, so
// its caches never outlive a plan or an apply.
type providerData struct {
	client        *dify.Client
	user          string
	redact        redactor
	conversations *conversationIndex
	feedbacks     *feedbackIndex
	annotations   *annotationIndex
	params        *appParameters
}

func newProviderData(s settings, userAgent string) (*providerData, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.ResponseHeaderTimeout = s.RequestTimeout
	transport.DialContext = (&net.Dialer{Timeout: min(s.RequestTimeout, 30*time.Second), KeepAlive: 30 * time.Second}).DialContext
	key := redactor(s.APIKey)
	client, err := dify.NewClient(s.BaseURL, s.APIKey,
		dify.WithUser(s.User),
		dify.WithHTTPClient(&http.Client{Transport: transport}),
		dify.WithUserAgent(userAgent),
		dify.WithRetryPolicy(dify.RetryPolicy{MaxAttempts: s.RetryMaxAttempts, MaxDelay: s.RetryMaxDelay}),
		dify.WithLogger(key.log),
	)
	if err != nil {
		return nil, err
	}
	return &providerData{
		client:        client,
		user:          s.User,
		redact:        key,
		conversations: newConversationIndex(client, defaultListingPageBudget),
		feedbacks:     newFeedbackIndex(client),
		annotations:   newAnnotationIndex(client),
		params:        newAppParameters(client),
	}, nil
}

// log sends the client's messages (retries, waits) to Terraform's log with
// the API key masked in the message and in every field.
func (r redactor) log(ctx context.Context, msg string, fields map[string]any) {
	if len(r) >= 4 {
		ctx = tflog.MaskMessageStrings(ctx, string(r))
		ctx = tflog.MaskAllFieldValuesStrings(ctx, string(r))
	}
	tflog.Info(ctx, msg, fields)
}

// configureData extracts providerData in a resource or data source Configure.
// It returns nil without a diagnostic while the provider is not configured
// yet (validation runs before configuration).
func configureData(raw any, diags interface {
	AddError(string, string)
}) *providerData {
	if raw == nil {
		return nil
	}
	d, ok := raw.(*providerData)
	if !ok {
		diags.AddError("Unexpected provider data",
			"The Dify provider handed an unexpected value to a resource or data source. This is a bug in the provider; please report it.")
		return nil
	}
	return d
}

// userOr returns u when set, else the provider's default user.
func (d *providerData) userOr(u string) string {
	if u != "" {
		return u
	}
	return d.user
}
