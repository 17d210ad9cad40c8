/* loss: softmax cross-entropy with optional label smoothing, the objective of every model.
 * Softmax is shifted by the row maximum so large logits cannot overflow. */
#include <math.h>

#include "layers.h"

float train_xent_forward(float *probs, const float *logits, const int *labels, int B, int V, float smoothing)
{
    double total = 0;
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * V;
        float *p = probs + (size_t)b * V;
        float mx = z[0];
        for (int v = 1; v < V; v++)
            if (z[v] > mx)
                mx = z[v];
        double s = 0;
        for (int v = 0; v < V; v++)
            s += exp((double)z[v] - mx);
        double lse = mx + log(s);
        double l = 0;
        for (int v = 0; v < V; v++) {
            double lp = z[v] - lse;
            p[v] = (float)exp(lp);
            double t = smoothing / V + (v == labels[b] ? 1.0 - smoothing : 0.0);
            l -= t * lp;
        }
        total += l;
    }
    return (float)(total / B);
}

void train_xent_backward(float *dlogits, const float *probs, const int *labels, int B, int V, float smoothing,
                         float grad_scale)
{
    float k = grad_scale / B;
    for (int b = 0; b < B; b++)
        for (int v = 0; v < V; v++) {
            float t = smoothing / V + (v == labels[b] ? 1.0f - smoothing : 0.0f);
            dlogits[(size_t)b * V + v] += k * (probs[(size_t)b * V + v] - t);
        }
}
