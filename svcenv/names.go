package svcenv

// The variables of every platform that name the op's module and files, for
// the SDKs that read them (sdk/module) and for Environ, which sets them.
const (
	VarModuleData   = "OARBANK_MODULE_DATA"
	VarModule       = "OARBANK_MODULE"
	VarService      = "OARBANK_SERVICE"
	VarNodeID       = "OARBANK_NODE_ID"
	VarPlatform     = "OARBANK_PLATFORM"
	VarSettingsFile = "OARBANK_SETTINGS_FILE"
	VarToolsFile    = "OARBANK_TOOLS_FILE"
	VarLimitsFile   = "OARBANK_LIMITS_FILE"
)

// The variables a job run under a lease gets (svcrun run, svcrun check
// --job), besides VarNodeID.
const (
	VarAttemptID    = "OARBANK_ATTEMPT_ID"
	VarLeaseID      = "OARBANK_LEASE_ID"
	VarServicesFile = "OARBANK_SERVICES_FILE"
)
