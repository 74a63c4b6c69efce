package llama

// #include "gojev.h"
// #include "ggml-backend.h"
import "C"

// DeviceType is a device's kind, ggml's enum ggml_backend_dev_type.
type DeviceType string

// The device types of ggml-backend.h.
const (
	DeviceCPU   DeviceType = "CPU"   // GGML_BACKEND_DEVICE_TYPE_CPU: system memory
	DeviceGPU   DeviceType = "GPU"   // GGML_BACKEND_DEVICE_TYPE_GPU: dedicated memory
	DeviceIGPU  DeviceType = "iGPU"  // GGML_BACKEND_DEVICE_TYPE_IGPU: integrated, host memory
	DeviceAccel DeviceType = "ACCEL" // GGML_BACKEND_DEVICE_TYPE_ACCEL: used with the CPU (BLAS, AMX)
	DeviceMeta  DeviceType = "META"  // GGML_BACKEND_DEVICE_TYPE_META: wraps several devices
)

// Device is one compute device of a backend registered with ggml: built into the binary, or
// loaded as a plugin.
type Device struct {
	// Name is ggml_backend_dev_name ("CPU", "CUDA0", "Vulkan0"); Description is
	// ggml_backend_dev_description (the processor or card).
	Name, Description string
	Type              DeviceType
	// Backend is the name of the device's backend registry (ggml_backend_reg_name of
	// ggml_backend_dev_backend_reg): "CPU", "CUDA", "Vulkan", "Metal", "BLAS".
	Backend string
	// FreeBytes and TotalBytes are ggml_backend_dev_memory's report, in bytes (for the CPU,
	// the system's memory).
	FreeBytes, TotalBytes uint64
}

// GPU reports whether layers can be offloaded to d (a discrete or integrated GPU).
func (d Device) GPU() bool { return d.Type == DeviceGPU || d.Type == DeviceIGPU }

// GPUNames names the devices of devs that layers can be offloaded to (Device.GPU), in order.
func GPUNames(devs []Device) []string {
	var out []string
	for _, d := range devs {
		if d.GPU() {
			out = append(out, d.Name)
		}
	}
	return out
}

// Devices lists the devices ggml has registered, in its order (ggml_backend_dev_count,
// ggml_backend_dev_get): the CPU in a CPU build, and the GPUs of the GPU backends built in. It
// initialises the backends first (llama_backend_init). Safe from several goroutines.
func Devices() []Device {
	initBackend()
	n := int(C.ggml_backend_dev_count())
	out := make([]Device, 0, n)
	for i := range n {
		dev := C.ggml_backend_dev_get(C.size_t(i))
		if dev == nil {
			continue
		}
		d := Device{
			Name:        C.GoString(C.ggml_backend_dev_name(dev)),
			Description: C.GoString(C.ggml_backend_dev_description(dev)),
			Type:        deviceType(C.ggml_backend_dev_type(dev)),
		}
		if reg := C.ggml_backend_dev_backend_reg(dev); reg != nil {
			d.Backend = C.GoString(C.ggml_backend_reg_name(reg))
		}
		var free, total C.size_t
		C.ggml_backend_dev_memory(dev, &free, &total)
		d.FreeBytes, d.TotalBytes = uint64(free), uint64(total)
		out = append(out, d)
	}
	return out
}

func deviceType(t C.enum_ggml_backend_dev_type) DeviceType {
	switch t {
	case C.GGML_BACKEND_DEVICE_TYPE_CPU:
		return DeviceCPU
	case C.GGML_BACKEND_DEVICE_TYPE_GPU:
		return DeviceGPU
	case C.GGML_BACKEND_DEVICE_TYPE_IGPU:
		return DeviceIGPU
	case C.GGML_BACKEND_DEVICE_TYPE_ACCEL:
		return DeviceAccel
	}
	return DeviceMeta
}
