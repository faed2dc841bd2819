from .robot import RobotModel
