/* escalation_record: letting go of an escalation's scontrol child (escalation_record.h), apart
 * from escalation.c so that freeing a job needs nothing of the escalation's logic. */
#include "escalation_record.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

void escalation_record_forget(escalation_t *e)
{
    if (e->pid <= 0)
        return;
    kill(-e->pid, SIGKILL);
    waitpid(e->pid, NULL, 0); /* killed: at once */
    close(e->out_fd);
    e->pid = 0;
    e->out_fd = -1;
}
