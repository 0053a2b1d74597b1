package vmconfig

import _ "embed"

// StartupScriptTemplate is the startup script every GCE proxy VM runs at
// each boot, as a text/template that internal/bootstrap renders for one
// proxy (its data and the rules that make the values safe to quote live
// there). It is shell that runs on the VM, which is why it lives here,
// beside the engine's configuration and the metadata items it reads.
//
//go:embed startup-script.sh.tmpl
var StartupScriptTemplate string
