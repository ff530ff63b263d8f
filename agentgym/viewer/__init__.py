"""`agentgym view`: a local, offline web page (or one static HTML file) over eval and training runs.

`runs` reads run directories, `stats` computes what the plots show, `svg` draws them on the server, `page`
builds the HTML, `server` serves it on 127.0.0.1, and `cli` is the command.
"""
