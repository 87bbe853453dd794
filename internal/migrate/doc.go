// Package migrate converts other projects' configurations into Railyard's.
//
// ConvertSRIOVDP reads the config.json of the SR-IOV network device plugin
// (k8snetworkplumbingwg/sriov-network-device-plugin: a "resourceList" of
// resources with resourceName, resourcePrefix, deviceType, excludeTopology,
// additionalInfo and selectors, given as one object or a list of objects)
// exactly as that plugin decodes it, and returns a v1alpha1.AgentConfig
// with one pool per resource that Railyard can serve, plus a Report that
// says, per resource and field, what was changed, what was dropped and
// why, and which assumptions need the operator's eye (chiefly: a pool
// serves either VFs or PFs, where the SR-IOV device plugin hands out a
// PF's VFs when it has some and the PF itself otherwise).
//
// Input the SR-IOV device plugin itself would refuse (not JSON, an unknown
// deviceType, a missing or invalid resourceName, duplicate names,
// unparsable selectors) is an error wrapping ErrInvalid. The package is
// pure: it reads only the bytes it is given and never logs.
package migrate
