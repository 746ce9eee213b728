/* kernels_form.h - which kernels a framework runs for an op where frameworks
 * differ (training.kernels, serving.kernels): one fused kernel, or eager
 * PyTorch's own; in the order of op_form_t (hw_models/op.h). Names:
 * workload_kernels_names (workload.h). */
#ifndef NPUSIM_KERNELS_FORM_H
#define NPUSIM_KERNELS_FORM_H

typedef enum { KERNELS_FUSED, KERNELS_UNFUSED, KERNELS_COUNT } kernels_form_t;

#endif
