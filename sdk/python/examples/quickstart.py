import os

import docket

worker = docket.Worker(os.environ["DOCKET_URL"], os.environ["DOCKET_WORKER_KEY"], slots=4)


@worker.workflow("py.hello")
def hello(task: docket.Task) -> dict:
    task.evidence("greeting", {"name": task.input["name"]})
    return {"greeting": "hello, " + task.input["name"]}


worker.run(install_signal_handlers=True)  # until Ctrl-C or SIGTERM: then a graceful shutdown
