package provider

import (
	"fmt"
	"regexp"
)

// deploymentPattern is an RFC 1035 label: what a label value must be for
// every provider the product has (GCE label values allow more, not less).
var deploymentPattern = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ValidateDeployment checks a deployment name (LabelDeployment's value):
// an RFC 1035 label, 1 to 63 lowercase letters, digits and '-', starting
// with a letter and ending with a letter or a digit.
func ValidateDeployment(name string) error {
	if !deploymentPattern.MatchString(name) {
		return fmt.Errorf("deployment name %q is not an RFC 1035 label: want 1 to 63 lowercase letters, digits and '-', starting with a letter and ending with a letter or digit, such as %q", name, DefaultDeployment)
	}
	return nil
}
