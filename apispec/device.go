package apispec

// The OAuth 2.0 device authorization grant (RFC 8628) of `trove login
// --device`, beside login.v1 (which names no device endpoint: the
// paths are Trove's own).
const (
	// DeviceAuthorizationPath is the device authorization endpoint: POST
	// client_id, answered with DeviceAuthorization.
	DeviceAuthorizationPath = "/oauth/device"
	// DeviceVerificationPath is the web page where a signed-in person
	// types the user code.
	DeviceVerificationPath = "/device"
	// DeviceGrantType is the grant_type of a device code at login.v1's
	// token endpoint.
	DeviceGrantType = "urn:ietf:params:oauth:grant-type:device_code"
)

// DeviceAuthorization is the answer of DeviceAuthorizationPath (RFC 8628
// section 3.2).
type DeviceAuthorization struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int64  `json:"expires_in"` // seconds
	Interval                int64  `json:"interval"`   // seconds between polls
}
